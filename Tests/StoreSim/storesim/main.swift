print("storesim")

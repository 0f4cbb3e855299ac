"""autofusion.zoo"""
